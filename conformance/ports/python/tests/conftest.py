import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PORT_DIR = os.path.dirname(HERE)
REPO_ROOT = os.path.abspath(os.path.join(PORT_DIR, "..", "..", ".."))
if PORT_DIR not in sys.path:
    sys.path.insert(0, PORT_DIR)
