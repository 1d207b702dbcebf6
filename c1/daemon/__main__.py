from c1.daemon.server import main

main()
