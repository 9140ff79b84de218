from printpipe.cli import main

main()
