"""``python -m c4table.cli``: the command line."""
from c4table.cli.main import main

if __name__ == "__main__":
    main()
