"""The examples' common start: numpy, which only Debian's interpreter sees
(/usr/bin/python3 with python3-numpy), and the hccn package of this tree,
checked before any work so a wrong interpreter fails at once."""
import os
import sys

try:
    import numpy  # noqa: F401 (re-exported)
except ImportError:
    sys.exit("%s needs numpy, which this interpreter (%s) cannot import: "
             "run it with Debian's /usr/bin/python3 (apt-get install -y "
             "python3-numpy)" % (sys.argv[0], sys.executable))

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import hccn  # noqa: E402,F401 (re-exported)
