"""What the model's code may say: the policy as data, the check of every AST node against it, and
the instrumentation that inserts the run-time checks. Pure AST work: imports no other room.
"""
