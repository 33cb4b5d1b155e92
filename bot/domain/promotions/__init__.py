"""Pure rules of one promotion: its candidate, the refusals that stop it, the marker and the
commit trailers Conveyor writes, and the text of its pull request. No I/O: the openers in
`bot.promotion` gather the facts and the offline `bump` reads a checkout, and both decide
through these functions."""
