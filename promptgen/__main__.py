from promptgen.cli import main

main()
