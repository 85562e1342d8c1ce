"""``python -m controller.northbound.proto``: regenerate the northbound API's stubs."""

import sys

from controller.northbound.proto import TREE
from southbound.protoc import main

sys.exit(main(TREE))
