"""``python -m southbound.standard.proto``: regenerate the standard protocols' stubs."""

import sys

from southbound.protoc import main
from southbound.standard.proto import TREE

sys.exit(main(TREE))
