"""``python -m rewardsvc.evaluation``: the label and eval commands."""

import sys

from rewardsvc.evaluation.commands import main

sys.exit(main())
