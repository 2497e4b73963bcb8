import sys

from mtllib.book.runner import main

sys.exit(main())
