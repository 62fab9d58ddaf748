"""`python -m executors.worker`: serve the host on stdin/stdout (see `main`)."""

import os

from .main import main

os._exit(main())
