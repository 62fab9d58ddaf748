from codeagent.cli.main import main

raise SystemExit(main())
