from chainwarden.cli import main

raise SystemExit(main())
