// codeagent view: sorting and filtering of tables, and live refresh. The only script the page
// runs (its Content-Security-Policy allows this script's hash and nothing else). It reads the
// page's own data attributes and never turns text into markup.
(function () {
  "use strict";
  var body = document.body;
  var saved = {};
  try { saved = JSON.parse(sessionStorage.getItem("codeagent-view:" + location.pathname) || "{}"); } catch (e) { saved = {}; }

  function cellValue(row, col, numeric) {
    var cell = row.cells[col];
    var v = cell ? (cell.getAttribute("data-v") !== null ? cell.getAttribute("data-v") : cell.textContent) : "";
    return numeric ? (parseFloat(v) || 0) : v.toLowerCase();
  }

  function setUpTable(table) {
    var tbody = table.tBodies[0];
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    var state = { sort: -1, desc: false, status: "", text: "" };
    var key = table.id || "rows";
    if (saved[key]) { state = Object.assign(state, saved[key]); }
    var bar = document.querySelector('[data-filters="' + key + '"]');
    var count = bar ? bar.querySelector("[data-count]") : null;
    var search = bar ? bar.querySelector("input") : null;
    var buttons = bar ? bar.querySelectorAll("button[data-status]") : [];

    function apply() {
      var rows = Array.prototype.slice.call(tbody.rows), shown = 0, needle = state.text.toLowerCase();
      rows.forEach(function (row) {
        var tags = " " + (row.getAttribute("data-status") || "") + " ";
        var ok = (!state.status || tags.indexOf(" " + state.status + " ") >= 0) &&
                 (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0);
        row.classList.toggle("hide", !ok);
        if (ok) { shown++; }
      });
      if (state.sort >= 0) {
        var numeric = heads[state.sort].classList.contains("num");
        rows.sort(function (a, b) {
          var x = cellValue(a, state.sort, numeric), y = cellValue(b, state.sort, numeric);
          var r = x < y ? -1 : x > y ? 1 : 0;
          return state.desc ? -r : r;
        });
        rows.forEach(function (row) { tbody.appendChild(row); });
      }
      Array.prototype.forEach.call(heads, function (th, i) {
        th.classList.toggle("asc", i === state.sort && !state.desc);
        th.classList.toggle("desc", i === state.sort && state.desc);
      });
      Array.prototype.forEach.call(buttons, function (b) {
        b.classList.toggle("on", b.getAttribute("data-status") === state.status);
      });
      if (count) { count.textContent = shown + " of " + rows.length + " shown"; }
      saved[key] = state;
    }
    Array.prototype.forEach.call(heads, function (th, i) {
      th.addEventListener("click", function () {
        state.desc = state.sort === i ? !state.desc : false;
        state.sort = i;
        apply();
      });
    });
    Array.prototype.forEach.call(buttons, function (b) {
      b.addEventListener("click", function () { state.status = b.getAttribute("data-status"); apply(); });
    });
    if (search) {
      search.value = state.text;
      search.addEventListener("input", function () { state.text = search.value; apply(); });
    }
    apply();
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.rows"), setUpTable);

  // Live: poll the server's fingerprint of the files this page was built from; reload on change,
  // keeping the filters, the sort, the open sections and the scroll position.
  var stateUrl = body.getAttribute("data-state-url");
  if (stateUrl) {
    var known = body.getAttribute("data-state");
    if (saved.scroll) { window.scrollTo(0, saved.scroll); }
    (saved.open || []).forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
    var poll = function () {
      fetch(stateUrl, { cache: "no-store" }).then(function (r) { return r.ok ? r.text() : known; }).then(function (now) {
        if (now !== known) {
          saved.scroll = window.scrollY;
          saved.open = Array.prototype.map.call(document.querySelectorAll("details[open][id]"), function (d) { return d.id; });
          sessionStorage.setItem("codeagent-view:" + location.pathname, JSON.stringify(saved));
          location.reload();
        } else { setTimeout(poll, 1000); }
      }, function () { setTimeout(poll, 3000); });
    };
    setTimeout(poll, 1000);
  }
})();
