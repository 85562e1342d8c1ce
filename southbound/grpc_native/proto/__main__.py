"""``python -m southbound.grpc_native.proto``: regenerate the device API's stubs."""

import sys

from southbound.grpc_native.proto import TREE
from southbound.protoc import main

sys.exit(main(TREE))
