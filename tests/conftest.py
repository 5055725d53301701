import os

os.environ.setdefault("THINWIRE_PROGRESS", "0")
