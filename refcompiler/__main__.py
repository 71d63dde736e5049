import sys

from refcompiler.cli import main

sys.exit(main())
