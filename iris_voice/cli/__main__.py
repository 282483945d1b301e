"""``python -m iris_voice.cli``: the ``iris`` command."""

import sys

from iris_voice.cli.main import main

sys.exit(main())
