import sys

from toolserver.cli import main

sys.exit(main())
