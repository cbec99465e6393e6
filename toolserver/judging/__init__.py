"""What the tools that compile a program and judge it against test cases share (the cpp
and program tools): the compile and its cache, a case's verdict, the cases' runs and answer."""
