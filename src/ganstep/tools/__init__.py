"""Tools that measure and explain: ``audit`` (a user's loop), ``bench`` (schedules against the
reference loops), ``reference`` (those loops as their sources wrote them) and ``flops``."""
