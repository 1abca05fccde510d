# SPDX-License-Identifier: Apache-2.0
"""``python -m t3hw``: the ``t3hw`` command line (:mod:`t3hw.cli`)."""

import sys

from t3hw.cli import main


sys.exit(main())
