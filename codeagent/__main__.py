from codeagent.cli import main

raise SystemExit(main())
