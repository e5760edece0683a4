"""Stage 1 of the depth student: DAgger from the installed walking policy into the recurrent depth student (CPU)."""
