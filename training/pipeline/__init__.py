"""Training pipelines that wire motion matching, the CPU environments, the algorithms and the export.

``smoke``: `parkour train smoke --out DIR`, the whole chain at toy size on the CPU (see smoke.py).
"""
