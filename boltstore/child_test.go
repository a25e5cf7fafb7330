package boltstore

const childEnv = "BOLTSTORE_TEST_CHILD"

func runChild(mode string) int { return 2 }
