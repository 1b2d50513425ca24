"""``python -m janus_memory.cli``: the `janus` command."""
import sys

from .app import main

sys.exit(main())
