"""The plans of every family: validated, normalised arguments and the maths both executors share.

A plan is a small named record (a NamedTuple) that a public function's
builder returns and an executor consumes (see ``posenc._api``). Each
``<family>.py`` holds its family's plan types and the computations both
executors need (frequencies, slopes, bucket boundaries, taps), so that the
native and NumPy executors start from the very same numbers.
"""
