from bertlens.cli import main

raise SystemExit(main())
