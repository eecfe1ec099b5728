from engram.cli.main import main

raise SystemExit(main())
