// ESLint (npm run lint): JavaScript's and typescript-eslint's recommended rules, plus the type-aware rules that
// catch defects a promise-based Temporal service can have (a floating or misused promise, a switch that misses a
// case). Layout is Prettier's (.prettierrc.json); the one layout rule here is the length of what Prettier leaves.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'build/', '.temporal/', '.schemathesis/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      // A caught `unknown` rethrown as it came is fine; a string or an object literal thrown is not.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // A step added to a shutdown before the thing it closes exists reads it before it is assigned.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A leading underscore names what is left unused on purpose (an omitted property, a required parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // Prettier wraps code at 120 but not strings, SQL or comments: the service's own lines stay readable too. A
    // URL or a regular expression is the exception; a string that cannot be split says so where it stands.
    files: ['**/*.ts', 'scripts/**/*.js'],
    ignores: ['test/**', 'bench/**'],
    plugins: { '@stylistic': stylistic },
    rules: { '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }] },
  },
  {
    // Tests read JSON bodies, rows and fixtures whose shape is what they assert: an `as` names that shape, even
    // where a generic call (knex's, Temporal's) could have been given it as a type argument.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unnecessary-type-assertion': 'off' },
  },
  {
    // The scripts are CommonJS run by node itself.
    files: ['scripts/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        __filename: 'readonly',
        console: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
