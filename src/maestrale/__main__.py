from maestrale.cli import main

raise SystemExit(main())
