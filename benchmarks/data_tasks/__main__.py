"""`python benchmarks/data_tasks`: see run.py."""

from run import main

raise SystemExit(main())
