"""thinwire: a reproducibility workbench for communication-efficient distributed deep learning.

Layers (imports only point left): codecs <- comm <- algorithms <- experiment <- notebooks.
"""

__version__ = "0.1.0"
