"""The training workspace (``parkour train|eval|mm``): see README.md."""

import os

# torch's OpenMP threads (GNU libgomp) spin between operations by default. On a 2-core machine the
# spinning threads take the cores MuJoCo's rollout threads need, and beside any other busy process
# every operation of the update waits for a descheduled thread. Sleeping threads cost neither
# (bench/results/training_threads.json). It must be set before torch is first imported; a value
# already set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
