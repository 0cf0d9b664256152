from showwork.cli import main

raise SystemExit(main())
