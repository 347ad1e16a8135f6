#!/bin/bash
got=$(bash add.sh 2 3)
if [ "$got" != "5" ]; then
  echo "FAIL: add 2 3 = $got, want 5"
  exit 1
fi
echo ok
