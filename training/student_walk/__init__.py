"""Stage 1 of issue 13: DAgger from the installed walking policy into the recurrent depth student (CPU)."""
