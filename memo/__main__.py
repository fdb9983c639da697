import sys

from memo.cli import main

sys.exit(main())
