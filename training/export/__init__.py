"""Export trained (or random) students as model bundles, checked numerically against torch.

``python -m training.export --random --size php_student_gpu --seed 0 --out models/student_random`` writes a
PHP-sized random-weight bundle; :func:`export_random_student` does the same from Python. Both
raise (or exit non-zero) with :class:`ParityError` when an exported model does not compute what
torch computes, and :class:`ExportError` for any other reason the bundle cannot be written.
"""

from training.export.parity import ParityError
from training.export.student import ExportError, export_random_student, export_student

__all__ = ["ExportError", "ParityError", "export_random_student", "export_student"]
