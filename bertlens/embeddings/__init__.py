"""The embedding layer laid bare: its computation checked, a token's static row, the matrix exported, model facts."""
