from prhub.cli import main

main()
