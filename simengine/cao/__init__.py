"""Cao's grid-job scheduling with reservations and preemption (MODELS.md §6, seed 001).

SCOJO-PECT local scheduling, RARS-HEFT relaxed reservations for workflow grid jobs
(``workflows``: Cao's 5-task workflows made from eligible Lublin-Feitelson jobs).
"""
