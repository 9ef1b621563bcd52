"""The services as native processes (infra/stack.py), and the same code as a container's main
process (infra/serve.py)."""
