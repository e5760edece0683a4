"""``python -m parkour_core.bundles.importers FORMAT SRC --out DIR``: see the package's docstring."""

from parkour_core.bundles.importers import main

raise SystemExit(main())
