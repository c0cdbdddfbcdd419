// sync.hpp: the synchronisation the SimGrid engine's actors share (inside sim/ only).
#pragma once

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include <algorithm>
#include <limits>
#include <mutex>

namespace gradsync::sim {

namespace sg4 = simgrid::s4u;

// Counter: a value actors add to and wait on (the one synchronisation primitive used here).
// SimGrid runs one actor at a time and switches only inside simcalls, so the checks between
// simcalls need no lock; the mutex exists for the condition variable.
class Counter {
 public:
  long value() const { return value_; }
  // add wakes the waiters only once the smallest value one of them waits for is reached: a
  // barrier of k actors costs k wake-ups, not k^2.
  void add(long n = 1) {
    value_ += n;
    if (waiters_ > 0 && value_ >= lowest_) {
      lowest_ = std::numeric_limits<long>::max();  // the woken that must wait on say so again
      std::unique_lock<sg4::Mutex> lock(*mutex_);
      cv_->notify_all();
    }
  }
  void wait_at_least(long v) {
    if (value_ >= v) return;
    if (!cv_) {
      mutex_ = sg4::Mutex::create();
      cv_ = sg4::ConditionVariable::create();
    }
    ++waiters_;
    {
      std::unique_lock<sg4::Mutex> lock(*mutex_);
      try {
        while (value_ < v) {
          lowest_ = std::min(lowest_, v);
          cv_->wait(lock);
        }
      } catch (const simgrid::ForcefulKillException&) {
        // The actor is being killed (the simulation ends, or another actor failed): unlocking
        // would be a simcall from a dying actor, which thread contexts cannot serve.
        lock.release();
        throw;
      }
    }
    --waiters_;
  }

 private:
  long value_ = 0;
  long lowest_ = std::numeric_limits<long>::max();  // the smallest value a waiter waits for
  int waiters_ = 0;
  sg4::MutexPtr mutex_;
  sg4::ConditionVariablePtr cv_;
};

// sleep_for: simulated time on the calling actor; nothing for zero.
inline void sleep_for(double s) {
  if (s > 0) sg4::this_actor::sleep_for(s);
}

}  // namespace gradsync::sim
