import sys

from clirplug.cli import main

sys.exit(main())
