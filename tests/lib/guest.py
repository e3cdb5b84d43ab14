"""The guest module is product code: lib/py/minitty/guest.py. The suites
import it from here (`from guest import Guest`): this name is that
module."""

import importlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "lib", "py"))
sys.modules[__name__] = importlib.import_module("minitty.guest")
