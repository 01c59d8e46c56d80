// Required by test/unit/.mocharc.json before any test file: the unit tier runs with the no-server guard.
import { installNoServerGuard } from './no-server';

installNoServerGuard();
