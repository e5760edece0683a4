"""Training tasks: one folder each, registered by the folder itself (``training.registry``).

A folder holds its task's config, environment and terms, its runner task (``task.py``), its presets
(``presets/*.yaml``, the names ``parkour train run --config`` takes) and its tests; its
``__init__.py`` calls ``training.registry.register_task``. Nothing outside the folder names it.
"""
