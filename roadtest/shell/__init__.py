"""`roadtest shell`: a guest with a test's devices bound, a shell in it, the models in Python.

command.py runs it as a pytest session (so conftest files and every option of
`roadtest run` apply) that collects the selection and, in place of running
tests, opens the guest session and hands the terminal to console.py;
selection.py turns the user's words into devices; terminal.py is the host's
pty that becomes a tty in the guest, and the raw bridge to it.
"""
