"""Motion matching (PHP, Method sections 1-3): a locomotion database and a registry of parkour
skills, searched by a 27-D feature, chained into long kinematic references paired with box terrain.

Entry points: ``synth.synthesize`` (``parkour mm synth``), ``render.render_clip`` (``parkour mm render``).
"""
