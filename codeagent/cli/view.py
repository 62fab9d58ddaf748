"""`codeagent view`: a run, a batch, or two batches compared, as a page you can look at.

    codeagent view RUN.json|DIR [--out FILE.html] [--open]
    codeagent view DIR --serve [--port N] [--open]        live, on 127.0.0.1, while DIR fills up
    codeagent view --compare DIR_A DIR_B [--out FILE.html] [--open] [--serve]

DIR is a batch folder (`codeagent batch --out DIR`), the --out folder of `codeagent run` or
`exec`, or any folder of saved runs. Without --out the page goes beside its source: RUN.html,
DIR/view.html (run pages in DIR/view-runs/), DIR_B/compare.html. Exit status: 0 done, 2 usage
errors (a path that holds nothing to show, a port in use).
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_parser", "main"]


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535 (0 picks a free one), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from ..view.server import DEFAULT_PORT

    p = argparse.ArgumentParser(prog="codeagent view", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", metavar="PATH", help="a saved run (.json), a batch folder or a run's --out folder")
    p.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"), help="show the tasks whose outcome changed "
                   "from batch DIR_A to batch DIR_B")
    p.add_argument("--out", metavar="FILE.html", help="where to write the page (default: beside its source)")
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("--serve", action="store_true", help="serve the pages on 127.0.0.1 and reload them while "
                   "the files change, instead of writing them")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, metavar="N",
                   help=f"port for --serve (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--verbose", action="store_true", help="with --serve: log each request on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.compare and args.path:
        parser.error("give either PATH or --compare DIR_A DIR_B, not both")
    if not args.compare and not args.path:
        parser.error("what to show: PATH (a saved run or a folder), or --compare DIR_A DIR_B")
    if args.serve and args.out:
        parser.error("--serve shows the pages live and writes no file: drop --out (or --serve)")
    source, against = (args.compare[0], args.compare[1]) if args.compare else (args.path, None)
    from ..view import ViewError

    try:
        if args.serve:
            return _serve(source, against, args)
        return _write(source, against, args)
    except ViewError as exc:
        print(f"codeagent view: {exc}", file=sys.stderr)
        return 2


def _write(source: str, against: str | None, args: argparse.Namespace) -> int:
    from ..view import ViewError, write_site

    try:
        written = write_site(source, args.out, against=against)
    except OSError as exc:
        where = args.out or "beside the source"
        raise ViewError(f"cannot write the page {where}: {exc.strerror or exc} (pass --out FILE.html)")
    root, runs = written[0], written[1:]
    extra = f" (+ {len(runs)} run page(s) in {runs[0].parent})" if runs else ""
    print(f"wrote {root}{extra}")
    if args.open:
        webbrowser.open(Path(root).resolve().as_uri())
    return 0


def _serve(source: str, against: str | None, args: argparse.Namespace) -> int:
    from ..view.server import serve

    def ready(url: str) -> None:
        shown = source if against is None else f"{source} → {against}"
        print(f"serving {shown} at {url} (reloads while the files change; Ctrl-C to stop)", flush=True)
        if args.open:
            webbrowser.open(url)

    serve(source, against=against, port=args.port, verbose=args.verbose, ready=ready)
    return 0
