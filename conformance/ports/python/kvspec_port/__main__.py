"""`python3 -m kvspec_port` starts the conformance testee (spec/protocol.md)."""

import sys

from .testee import main

sys.exit(main())
