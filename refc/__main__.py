import sys

from refc.cli import main

sys.exit(main())
