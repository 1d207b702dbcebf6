from c1.cli import main

main()
