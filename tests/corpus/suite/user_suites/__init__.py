"""User suites for the contract tests: one that breaks the contract, one that needs a
package this machine does not have."""
